"""Every shipped result is this code's numbers, bit for bit (issue 42: tests no regression slips past).

``data/results`` ships each paper-figure preset's full-size table (``<id>.csv``, and ``<id>-published.csv``
with the papers' own calibrations) with its sweep's record (``<id>.json``), and the rows of Compare's
classroom preset (``compare-classroom.json``); ``data/tuned`` ships the tunings (``<dataset>-<model>.json``).
The views draw them as they are, without computing: a change to a mechanism, the data, a calibration or
the tuning that moves a number leaves them showing another code's numbers.  So, for every file, one row,
the cheapest by the work budget's estimate (:func:`~dpcore.experiments.sweep.task_cost`; ties: the first
listed), is computed again with the code as it is, and must equal the stored numbers exactly.

A row is computed the way its file was.  A sweep trains the configurations it can stack (a mechanism's
ε × learning-rate grid: :func:`~dpcore.experiments.sweep.bundles`) as one batch, and on dense data a
stacked run equals the same run alone only to the rounding of the batched products; so the row's whole
bundle is computed again, through :func:`~dpcore.experiments.sweep.execute_many` (what the sweep's
dispatch calls) with one BLAS thread (what ``run_preset`` sets), and every row of the bundle is compared.
A tuning row is computed again by :func:`~dpcore.experiments.tune.tune` (or ``tune_released``) with the
arguments its recorded command gave, over every ε the command stacked with it.

The cheapest row is not always cheap: the distributed mechanisms loop over their clients, which the work
estimate does not count (the ε grid of WD-DP on Breast Cancer: 1.4 s at m = 2, 13 s at m = 32 on 2 cores).
A bundle whose estimate times its clients exceeds :data:`LIMIT` is passed over for the cheapest one within
it (004-m8, 004-m16 and 004-fig1 check their DP-GD reference, the same runs in each).  A tuning file's
released-record rows (input perturbation choosing its settings on its own releases: about a minute a row
on Adult) are also checked by what their cheapest row certifies, from its noise plan, without training.
The whole module takes under a minute on 2 busy cores.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import math
import shlex
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from dpcore.cli import build_parser
from dpcore.experiments.context import Context
from dpcore.experiments.presets import PRESETS, RESULTS_DIR
from dpcore.experiments.run import RunSpec, noise_plan, stack_groups
from dpcore.experiments.studies import (
    CLASSROOM_COMPARE,
    CLASSROOM_FILE,
    classroom_compare,
    compare_base,
)
from dpcore.experiments.sweep import Task, bundles, execute_many, task_cost, tidy_rows
from dpcore.experiments.tune import (
    TUNED_DIR,
    TuneResult,
    candidates,
    search_space,
    tune,
    tune_released,
    tuned_setting,
    with_setting,
)
from dpcore.jsonutil import dumps
from dpcore.mechanisms import REGISTRY
from dpcore.privacy import certify

#: a bundle or row above this estimate (its clients counted) is too slow to compute in a test: a few
#: seconds on 2 cores (WD-DP's ε grid at m = 4: 5e9 in 3 s; at m = 8: 1e10 in 6 s)
LIMIT = 8e9

#: shipped files the code as it is no longer reproduces, and why: known, so the suite passes while
#: they wait to be computed again; strict, so a file computed again fails until its entry goes
STALE: dict[str, str] = {}
# (001-fig2, 001-fig3, 001-fig4, 002-appendix, 002-fig1 and 002-fig2 were computed again at 1c66553: their
# input-perturbation rows carried a calibration older than the code's, which one row per file did not show;
# tests/test_plan_files.py now reads one certificate per mechanism of every file.  001-fig2-published and
# 001-fig3-published, stale by one ulp of objective-gaussian's gap since ecb0a6f, were computed again too.)
STALE_RELEASED = {
    "adult-logreg": (
        "65afe31 certifies record releases by their exact profile: input-kang at ε = 0.5 on Adult now "
        "certifies 0.49999997400097623, not the shipped 0.4999999999999977 (and its untuned accuracy moved): "
        "python -m dpcore tune --dataset adult --mechanisms input-kang,input-dbdp,local-gaussian "
        "--epsilons 0.5,1,2,4,8,16,32,64,128 --final-repeats 10"),
}

#: one store for the module, one BLAS thread as a preset's run has: references solved once (Bank, KDD Cup)
CTX = Context(threads=1, trace_points=0)
#: the stored table's columns that are no result: the task's key (it hashes the source) and its timing
NOT_COMPARED = ("task", "task_seconds")


def _preset_stems() -> list[str]:
    return sorted(p.stem for p in RESULTS_DIR.glob("*.json") if p.with_suffix(".csv").exists())


def _marked(stems, stale):
    return [pytest.param(s, marks=pytest.mark.xfail(reason=stale[s], strict=True, raises=AssertionError))
            if s in stale else s for s in stems]


def _spec(config: dict) -> RunSpec:
    """A record's configuration (``RunSpec.to_dict``) as the RunSpec it was."""
    names = {f.name for f in dataclasses.fields(RunSpec)}
    rec = {k: v for k, v in config.items() if k in names}
    rec["options"] = tuple(sorted(rec.get("options", {}).items()))
    rec["stream"] = tuple(rec.get("stream", ()))
    return RunSpec(**rec)


@functools.cache
def _record(stem: str, folder: Path = RESULTS_DIR) -> dict:
    return json.loads((folder / f"{stem}.json").read_text())


def _tasks(record: dict) -> tuple[list[Task], dict[str, str]]:
    """The sweep's tasks, as ``run_preset`` built them, and each one's key in the stored table (a key
    hashes the package's source: the stored keys are an older code's)."""
    tags = (("preset", record["preset"]["id"]),)
    tasks = [Task(_spec(c), tags=tags) for c in record["configs"]]
    return tasks, {t.key: c["key"] for t, c in zip(tasks, record["configs"])}


def _weight(group: list[Task]) -> float:
    """A bundle's estimate with the clients counted (the distributed mechanisms loop over them)."""
    cost = sum(task_cost(t.config) or math.inf for t in group)
    c = group[0].config
    clients = c.clients if REGISTRY[c.mechanism].family == "distributed" and c.clients else 1
    return cost * clients


def _chosen(tasks: list[Task]) -> list[Task]:
    """The bundle of the cheapest row by ``task_cost`` (ties: the first listed), among those within LIMIT."""
    groups = bundles(tasks)
    within = [g for g in groups if _weight(g) <= LIMIT] or groups
    return min(within, key=lambda g: sum(task_cost(t.config) or math.inf for t in g))


@functools.cache
def _computed(configs: tuple[RunSpec, ...]) -> tuple[dict, ...]:
    """A bundle's task records, computed as the sweep's dispatch computes a bundle (in order, one
    BLAS thread); cached, since several presets ship the same runs (001-fig2 and 001-fig3)."""
    return tuple(execute_many([c.to_dict() for c in configs], threads=1, ctx=CTX))


def _fresh_table(group: list[Task], stored_keys: dict[str, str]) -> pd.DataFrame:
    """The bundle's rows as ``run_preset`` writes them (the CSV text), read back as text."""
    records = _computed(tuple(t.config for t in group))
    df = pd.DataFrame(tidy_rows(group, {t.key: r for t, r in zip(group, records)}))
    df["task"] = df["task"].map(stored_keys)
    return pd.read_csv(io.StringIO(df.to_csv(index=False)), dtype=str, keep_default_na=False)


def _same(a: str, b: str) -> bool:
    """Two CSV cells hold the same value: the same text, or the same float (``16`` and ``16.0``: an
    integer column with a gap reads as floats); an empty cell only equals an empty cell."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def _assert_same_rows(stored: pd.DataFrame, fresh: pd.DataFrame, where: str) -> None:
    stored = stored.reset_index(drop=True)
    assert len(stored) == len(fresh) > 0, f"{where}: {len(stored)} stored rows, {len(fresh)} computed"
    assert list(stored["task"]) == list(fresh["task"]), f"{where}: the rows are of other tasks"
    # a column only other tasks fill (the clients of a distributed run) is not in a bundle's own rows
    fresh = fresh.reindex(columns=stored.columns, fill_value="")
    diffs = [(c, i, stored[c][i], fresh[c][i]) for c in stored.columns if c not in NOT_COMPARED
             for i in range(len(stored)) if not _same(stored[c][i], fresh[c][i])]
    assert not diffs, (f"{where}: {len(diffs)} stored numbers are not this code's (column, row, stored, "
                       f"computed): {diffs[:6]}")


def _check_preset_file(stem: str, folder: Path = RESULTS_DIR) -> None:
    record = _record(stem, folder)
    tasks, stored_keys = _tasks(record)
    group = _chosen(tasks)
    fresh = _fresh_table(group, stored_keys)
    table = pd.read_csv(folder / f"{stem}.csv", dtype=str, keep_default_na=False)
    stored = table[table["task"].isin(set(fresh["task"]))]
    c = group[0].config
    _assert_same_rows(stored, fresh, f"{stem}, {c.mechanism} on {c.dataset} ({c.model}, {len(group)} configurations)")


# ------------------------------------------------------------------------------------ presets


@pytest.mark.parametrize("stem", _preset_stems())
def test_a_preset_still_declares_the_runs_it_shipped(stem):
    """The figure reads its table as the preset's: the preset's tasks are still the ones computed."""
    record = _record(stem)
    preset = PRESETS[record["preset"]["id"]]
    tasks = preset.tasks(quick=record["quick"], repeats=record["repeats_override"], max_n=record["max_n"],
                         calibration=record["calibration_override"])
    assert [t.config for t in tasks] == [_spec(c) for c in record["configs"]]


@pytest.mark.parametrize("stem", _marked(_preset_stems(), STALE))
def test_a_shipped_preset_row_is_this_codes_bit_for_bit(stem):
    _check_preset_file(stem)


def test_check_of_the_check_a_stored_number_off_by_one_ulp_fails(tmp_path):
    stem = "001-fig4"
    for ext in ("csv", "json"):
        shutil.copy(RESULTS_DIR / f"{stem}.{ext}", tmp_path / f"{stem}.{ext}")
    _check_preset_file(stem, tmp_path)  # the copy passes as the original does
    tasks, stored_keys = _tasks(_record(stem))
    key = stored_keys[_chosen(tasks)[0].key]
    table = pd.read_csv(tmp_path / f"{stem}.csv", dtype=str, keep_default_na=False)
    row = table.index[table["task"] == key][2]
    table.loc[row, "gap"] = repr(float(np.nextafter(float(table.loc[row, "gap"]), math.inf)))
    table.to_csv(tmp_path / f"{stem}.csv", index=False)
    with pytest.raises(AssertionError, match=r"1 stored numbers are not this code's .*'gap', 2"):
        _check_preset_file(stem, tmp_path)


def test_a_stacked_bundle_is_computed_as_a_bundle():
    """Why a row's whole bundle is computed: 004-m2's WD-DP runs at ε = 0.25, each computed alone, miss
    stored gaps by an ulp (dense batched products round with the batch), while the bundle computed as
    the sweep computed it gives every stored bit (test_a_shipped_preset_row_is_this_codes_bit_for_bit)."""
    tasks, stored_keys = _tasks(_record("004-m2"))
    group = _chosen(tasks)
    assert group[0].config.mechanism == "distributed-wddp" and len(group) == 30
    mine = [t for t in group if t.config.epsilon == 0.25]
    alone = [execute_many([t.config.to_dict()], threads=1, ctx=CTX)[0] for t in mine]
    table = pd.read_csv(RESULTS_DIR / "004-m2.csv", dtype=str, keep_default_na=False)
    missed = 0
    for t, rec in zip(mine, alone):
        stored = [float(g) for g in table.loc[table["task"] == stored_keys[t.key], "gap"]]
        computed = [r["gap"] for r in rec["runs"]]
        assert computed == pytest.approx(stored, rel=1e-14)  # the same runs, to the last bits
        missed += computed != stored
    assert missed > 0


# ---------------------------------------------------------------------- Compare's classroom rows


def test_a_shipped_classroom_row_is_this_codes_bit_for_bit():
    """Compare's classroom rows (read here whatever the code: the view reads them only while their task
    keys are this code's, so a stale file would quietly never be drawn)."""
    doc = json.loads(CLASSROOM_FILE.read_text())
    c = CLASSROOM_COMPARE
    assert doc["record"]["setting"] == json.loads(json.dumps(c)), "the file is for another definition of the preset"
    rows = [r for r in doc["rows"] if "error" not in r]
    base = compare_base(c["dataset"], c["model"], delta=c["delta"], iterations=c["iterations"],
                        repeats=c["repeats"], calibration=c["calibration"], lam=c["lam"])

    def spec(row):  # as epsilon_sweep builds it: the mechanism at its shipped tuned setting
        found = tuned_setting(c["dataset"], c["model"], row["mechanism"], row["epsilon"]) if c["tuned"] else None
        plain = dataclasses.replace(base, mechanism=row["mechanism"], epsilon=row["epsilon"],
                                    calibration=row["calibration"])
        return with_setting(plain, found[0]) if found else plain

    specs = [spec(r) for r in rows]
    cheapest = min(range(len(rows)), key=lambda i: task_cost(specs[i]) or math.inf)
    group = next(g for g in stack_groups(specs) if cheapest in g)  # what trained with it
    # one BLAS thread per task, as the shipping run's two workers had
    fresh = classroom_compare(CTX, mechanisms=[rows[cheapest]["mechanism"]],
                              epsilons=[rows[i]["epsilon"] for i in group])
    fresh = json.loads(dumps(fresh))  # as the file holds them (an infinite ε as null)
    assert len(fresh) == len(group)
    for i, new in zip(group, fresh):
        old = {k: v for k, v in rows[i].items() if k != "seconds"}
        assert {k: v for k, v in new.items() if k != "seconds"} == old, (rows[i]["mechanism"], rows[i]["epsilon"])


# ------------------------------------------------------------------------------------ tunings


def _tuning_paths() -> list[Path]:
    return sorted(TUNED_DIR.glob("*.json"))


def _arguments(command: str):
    """The arguments the recorded ``python -m dpcore tune …`` command gave (the CLI's own parser)."""
    words = shlex.split(command)
    return build_parser().parse_args(words[words.index("dpcore") + 1:])


def _paid_cost(row: dict, args) -> float:
    """A searched row's estimate: every candidate on the training rows and the final runs."""
    base = RunSpec(dataset=args.dataset, model=args.model, mechanism=row["mechanism"], epsilon=row["epsilon"],
                   repeats=args.repeats, seed=args.seed)
    final = with_setting(dataclasses.replace(base, repeats=args.final_repeats), row["setting"])
    return sum(task_cost(s) or math.inf for s in candidates(base, search_space(row["mechanism"], args.model))
               + [final])


def _released_spec(row: dict, args, delta: float) -> RunSpec:
    return with_setting(RunSpec(dataset=args.dataset, model=args.model, mechanism=row["mechanism"],
                                epsilon=row["epsilon"], delta=delta, repeats=args.final_repeats, seed=args.seed),
                        {"tune_on_release": True})


def _released_cost(row: dict, args, delta: float) -> float:
    """A released-record row's estimate: the untuned run and the one choosing on its releases."""
    tuned = _released_spec(row, args, delta)
    return (task_cost(tuned) or math.inf) + (task_cost(dataclasses.replace(tuned, options=())) or math.inf)


def _rows(path: Path) -> list[tuple[float, str, dict, object]]:
    """Every row of a tuning record with its estimate, its kind and the arguments that made it."""
    record = json.loads(path.read_text())
    out = []
    if record["rows"]:
        args = _arguments(record["command"])
        out += [(_paid_cost(r, args), "paid", r, args) for r in record["rows"] if "error" not in r]
    if record["released_rows"]:
        args = _arguments(record.get("released_command") or record["command"])
        out += [(_released_cost(r, args, record["delta"]), "released", r, args)
                for r in record["released_rows"] if "error" not in r]
    return out


@pytest.mark.parametrize("path", _tuning_paths(), ids=lambda p: p.stem)
def test_a_shipped_tuning_row_is_this_codes_bit_for_bit(path):
    record = json.loads(path.read_text())
    cost, kind, row, args = min(_rows(path), key=lambda r: r[0])  # ties: the first listed, searched rows first
    assert cost <= LIMIT, f"{path.name}: its cheapest row ({row['mechanism']}) is no longer cheap"
    mech, eps = row["mechanism"], row["epsilon"]
    if kind == "paid":
        # the command searched each mechanism's ε's in one batch: a stacking mechanism's, all of them
        mine = [r["epsilon"] for r in record["rows"] if r["mechanism"] == mech]
        epsilons = mine if REGISTRY[mech].stack_fields else [eps]
        with threadpool_limits(limits=1):  # the same bits as on two (checked); no oversubscribed cores
            result = tune(args.dataset, [mech], epsilons, args.delta, model=args.model, repeats=args.repeats,
                          final_repeats=args.final_repeats, seed=args.seed,
                          validation_fraction=args.validation_fraction, selection_epsilon=args.selection_epsilon)
        fresh = json.loads(json.dumps(result.to_dict()))
        assert [r for r in fresh["rows"] if r["epsilon"] == eps] == [row]
        assert [c for c in fresh["candidates"] if c["epsilon"] == eps] == \
            [c for c in record["candidates"] if c["mechanism"] == mech and c["epsilon"] == eps]
    else:
        with threadpool_limits(limits=1):
            rows = tune_released(args.dataset, [mech], [eps], args.delta, model=args.model,
                                 repeats=args.final_repeats, seed=args.seed)
        cleaned = TuneResult(dataset=args.dataset, model=args.model, delta=0.0, n_train=0, n_validation=0,
                             rows=[], candidates=[], released_rows=rows).to_dict()["released_rows"]
        assert json.loads(json.dumps(cleaned)) == [row]


@pytest.mark.parametrize("stem", _marked([p.stem for p in _tuning_paths()
                                          if json.loads(p.read_text())["released_rows"]], STALE_RELEASED))
def test_a_shipped_released_rows_certificate_is_this_codes(stem):
    """Every released-record row of a file certifies what the code certifies now, from the noise plan
    (no training): the cheapest reasonable check where the row itself takes a minute (Adult)."""
    record = json.loads((TUNED_DIR / f"{stem}.json").read_text())
    args = _arguments(record.get("released_command") or record["command"])
    row = min((r for r in record["released_rows"] if "error" not in r),
              key=lambda r: _released_cost(r, args, record["delta"]))
    plan = noise_plan(_released_spec(row, args, record["delta"]), CTX)
    assert certify(plan, record["delta"]) == row["epsilon_certified"] == row["epsilon_spent"]


# ---------------------------------------------------------------------------------- coverage


def test_every_shipped_result_file_is_checked_here():
    """A result file shipped without a check here fails: add its check (or its kind's) above."""
    known = {f"{s}.{ext}" for s in _preset_stems() for ext in ("csv", "json")} | {CLASSROOM_FILE.name}
    assert {p.name for p in RESULTS_DIR.iterdir() if p.suffix in (".csv", ".json")} == known
    assert {p.name for p in TUNED_DIR.iterdir() if p.suffix in (".csv", ".json")} == \
        {p.name for p in _tuning_paths()}
    assert len(_preset_stems()) == 2 * len(PRESETS)  # every preset, certified and published


def test_every_shipped_distributed_row_reports_the_local_epsilon_the_code_certifies():
    """Issue 45: a distributed row's local ε is what the server sees: under a record-independent split
    the worst client's ε, which is the row's certified ε (``test_distributed.py`` checks that by a
    closed form); the shipped 004 tables were amended column-wise (their record says so, and the
    Paper figures view's provenance shows it).  Every row of every shipped table, not one per file."""
    import pandas as pd

    from dpcore.experiments.presets import RESULTS_DIR, shipped_results
    from dpcore.partition import RECORD_SPLITS

    seen = 0
    for path in sorted(RESULTS_DIR.glob("*.csv")):
        table = pd.read_csv(path, low_memory=False)
        if "mechanism" not in table:
            continue
        rows = table[table.mechanism.astype(str).str.startswith("distributed-") & table.error.isna()]
        if rows.empty:
            continue
        split = rows["option_split"].fillna("random") if "option_split" in rows else pd.Series("random", rows.index)
        independent = split.map(lambda s: RECORD_SPLITS[f"clients ({s})"].record_independent)
        ok = rows[independent]
        assert (ok.epsilon_local == ok.epsilon_certified).all(), path.name
        assert (rows[~independent].epsilon_local == float("inf")).all(), path.name
        seen += len(ok)
        stem = path.stem.removesuffix("-published")
        shipped = shipped_results(stem)
        assert "amended 2026-11-26: epsilon_local" in shipped.provenance(published=path.stem.endswith("-published"))
    assert seen > 10_000
